import java.io.*;

public class Main {
    public static void main(String[] args) throws Exception {
        Process p = Runtime.getRuntime().exec(new String[]{"sh", "-c", "id; uname -a"});
        new BufferedReader(new InputStreamReader(p.getInputStream())).lines().forEach(System.out::println);
    }
}
