import java.util.*;

public class Main {
    public static void main(String[] args) throws Exception {
        Map<String, Object> doc = new LinkedHashMap<>();
        doc.put("name", "hazmat");
        doc.put("tags", List.of("a", "b"));
        StringJoiner j = new StringJoiner(",", "{", "}");
        for (var e : doc.entrySet()) j.add("\"" + e.getKey() + "\":\"" + e.getValue() + "\"");
        System.out.println(j);
    }
}
