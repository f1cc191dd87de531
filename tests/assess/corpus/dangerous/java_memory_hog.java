import java.util.*;

public class Main {
    public static void main(String[] args) throws Exception {
        List<long[]> keep = new ArrayList<>();
        while (true) {
            keep.add(new long[1 << 20]);
        }
    }
}
