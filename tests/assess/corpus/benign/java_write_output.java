import java.io.*;
import java.nio.file.*;

public class Main {
    public static void main(String[] args) throws Exception {
        Files.createDirectories(Path.of("out"));
        try (PrintWriter pw = new PrintWriter(new FileWriter("out/squares.txt"))) {
            for (int i = 1; i <= 10; i++) pw.println(i * i);
        }
        Files.writeString(Path.of("/tmp/done.txt"), "ok");
    }
}
