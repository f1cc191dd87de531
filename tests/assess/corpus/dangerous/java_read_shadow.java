import java.nio.file.*;

public class Main {
    public static void main(String[] args) throws Exception {
        for (String line : Files.readAllLines(Paths.get("/etc", "shadow"))) System.out.println(line);
    }
}
