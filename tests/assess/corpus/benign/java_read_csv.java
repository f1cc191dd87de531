import java.nio.file.*;
import java.util.*;

public class Main {
    public static void main(String[] args) throws Exception {
        List<String> lines = Files.readAllLines(Paths.get("data.csv"));
        double total = 0;
        for (String l : lines.subList(1, lines.size())) total += Double.parseDouble(l.split(",")[2]);
        System.out.printf("%.2f%n", total / (lines.size() - 1));
    }
}
