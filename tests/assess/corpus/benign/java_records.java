import java.util.*;

public class Main {
    public static void main(String[] args) throws Exception {
        record Point(int x, int y) { double norm() { return Math.sqrt(x * x + y * y); } }
        List<Point> ps = new ArrayList<>(List.of(new Point(3, 4), new Point(1, 1), new Point(6, 8)));
        ps.sort(Comparator.comparingDouble(Point::norm));
        ps.forEach(p -> System.out.println(p + " " + p.norm()));
    }
}
