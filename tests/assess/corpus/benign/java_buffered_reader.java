import java.io.*;
import java.util.*;

public class Main {
    public static void main(String[] args) throws Exception {
        BufferedReader br = new BufferedReader(new InputStreamReader(System.in));
        Map<String, Integer> counts = new TreeMap<>();
        String line;
        while ((line = br.readLine()) != null) {
            for (String w : line.toLowerCase().split("\\W+")) {
                if (!w.isEmpty()) counts.merge(w, 1, Integer::sum);
            }
        }
        counts.forEach((w, c) -> System.out.println(w + " " + c));
    }
}
