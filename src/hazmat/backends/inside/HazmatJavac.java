import java.io.ByteArrayOutputStream;
import java.io.OutputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.SynchronousQueue;
import javax.tools.JavaCompiler;
import javax.tools.ToolProvider;

public final class HazmatJavac {
    public static void main(String[] argv) throws Exception {
        Path dir = Path.of(argv[0]);
        SynchronousQueue<List<String>> requests = new SynchronousQueue<>();
        Thread reader = new Thread(() -> {
            try {
                requests.put(Files.readAllLines(dir.resolve("in")));
            } catch (Exception e) {
                System.exit(2);
            }
        });
        reader.setDaemon(true);
        reader.start();
        JavaCompiler javac = ToolProvider.getSystemJavaCompiler();
        List<String> request = requests.poll();
        if (request == null) {
            warm(javac, dir);
            request = requests.take();
        }
        Files.deleteIfExists(dir.resolve("in"));
        ByteArrayOutputStream diagnostics = new ByteArrayOutputStream();
        int status = javac.run(null, diagnostics, diagnostics, request.toArray(new String[0]));
        Files.write(dir.resolve("out"), diagnostics.toByteArray());
        Files.writeString(dir.resolve("status"), status + "\n");
        try (OutputStream done = Files.newOutputStream(dir.resolve("done"))) {
            done.write('\n');
        }
        Files.deleteIfExists(dir.resolve("done"));
        System.exit(0);
    }

    private static void warm(JavaCompiler javac, Path dir) throws Exception {
        Path work = Files.createTempDirectory(dir, "warm");
        Path source = work.resolve("Main.java");
        Files.writeString(source, "import java.util.*;\npublic class Main {\n"
            + "    public static void main(String[] args) {\n"
            + "        List<Integer> xs = new ArrayList<>(List.of(3, 1, 2));\n"
            + "        Collections.sort(xs);\n        System.out.println(xs);\n    }\n}\n");
        OutputStream nothing = OutputStream.nullOutputStream();
        javac.run(null, nothing, nothing, "-proc:none", "-d", work.toString(), source.toString());
        try (var paths = Files.walk(work)) {
            paths.sorted(java.util.Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
        }
    }
}
