import java.util.*;
import java.util.stream.*;

public class Main {
    public static void main(String[] args) throws Exception {
        List<String> names = List.of("ada", "grace", "alan", "barbara", "edsger");
        Map<Integer, List<String>> byLength = names.stream()
            .map(String::toUpperCase)
            .collect(Collectors.groupingBy(String::length, TreeMap::new, Collectors.toList()));
        System.out.println(byLength);
    }
}
