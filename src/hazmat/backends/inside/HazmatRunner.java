import java.io.FileOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.io.RandomAccessFile;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;

/**
 * A kept build's next Java test, started before its job (session.sh's start_warm): the JVM
 * boots with the program's own flags, says it is ready on the agent's channel (fd
 * `runner[1]`) and waits for a line on the FIFO `runner[2]`, which the agent writes once the
 * test is unpacked and the host has said go. It then reads the class to run (the build's
 * main-class file, in `runner[0]`) and the test's arguments, and calls its main as the `java`
 * launcher would: a throwable out of main is thrown on from the runner's own main, without
 * the runner's frames, so the JVM reports it and ends with status 1 exactly as for `java
 * Main`. The test's stdin is fd 0, which the agent opened on the file the test's stdin is
 * written into.
 */
public final class HazmatRunner {
    private HazmatRunner() {}

    public static void main(String[] runner) throws Throwable {
        // the go channel is opened first (read and write: the open does not wait for the
        // agent), so that the line the agent writes after the ready line cannot be missed
        try (RandomAccessFile start = new RandomAccessFile(runner[2], "rw")) {
            try (OutputStream ready = new FileOutputStream("/proc/self/fd/" + runner[1])) {
                ready.write("hazmat-ready\n".getBytes(StandardCharsets.US_ASCII));
            }
            if (start.read() < 0) {
                die("no go-ahead for the test");
            }
        }
        Path build = Path.of(runner[0]);
        String name = Files.readString(build.resolve("main-class")).strip();
        String[] args = arguments(Path.of("/tmp/.hazmat-job.json"));
        Method main;
        try {
            Class<?> type = Class.forName(name, false, ClassLoader.getSystemClassLoader());
            main = type.getMethod("main", String[].class);
        } catch (ClassNotFoundException | NoClassDefFoundError e) {
            System.err.println("Error: Could not find or load main class " + name);
            System.err.println("Caused by: " + e);
            System.exit(1);
            return;
        } catch (NoSuchMethodException e) {
            System.err.println("Error: Main method not found in class " + name
                    + ", please define the main method as:\n"
                    + "   public static void main(String[] args)");
            System.exit(1);
            return;
        }
        if (!Modifier.isStatic(main.getModifiers()) || main.getReturnType() != void.class) {
            System.err.println("Error: Main method not found in class " + name
                    + ", please define the main method as:\n"
                    + "   public static void main(String[] args)");
            System.exit(1);
            return;
        }
        main.setAccessible(true);
        try {
            main.invoke(null, (Object) args);
        } catch (InvocationTargetException e) {
            throw without(e.getCause(), new IdentityHashMap<>());
        } catch (ExceptionInInitializerError e) {
            throw without(e, new IdentityHashMap<>());
        }
    }

    /** `thrown` and what it holds, each without the frames of the reflective call and this
     * runner at the bottom of its stack (`java Main` has none there). */
    private static Throwable without(Throwable thrown, Map<Throwable, Boolean> seen) {
        if (thrown == null || seen.put(thrown, true) != null) {
            return thrown;
        }
        StackTraceElement[] frames = thrown.getStackTrace();
        int end = frames.length;
        while (end > 0 && ours(frames[end - 1])) {
            end--;
        }
        if (end < frames.length) {
            thrown.setStackTrace(Arrays.copyOf(frames, end));
        }
        without(thrown.getCause(), seen);
        for (Throwable suppressed : thrown.getSuppressed()) {
            without(suppressed, seen);
        }
        return thrown;
    }

    private static boolean ours(StackTraceElement frame) {
        String type = frame.getClassName();
        return type.equals("HazmatRunner")
                || type.equals("java.lang.reflect.Method")
                || type.startsWith("jdk.internal.reflect.");
    }

    /** The test's arguments from the job's JSON, which the host writes in one shape (ASCII,
     * `\\u` escapes): `{"env": {}, "args": [...]}`; no file or an empty one: none. A job with an
     * environment never comes here: the agent runs it with `java` (the JVM's is fixed). */
    private static String[] arguments(Path path) throws IOException {
        String job;
        try {
            job = Files.readString(path, StandardCharsets.US_ASCII);
            Files.delete(path);
        } catch (NoSuchFileException e) {
            return new String[0];
        }
        if (job.isEmpty()) {
            return new String[0];
        }
        String head = "{\"env\": {}, \"args\": [";
        if (!job.startsWith(head) || !job.endsWith("]}")) {
            return die("unknown job format");
        }
        List<String> args = new ArrayList<>();
        String list = job.substring(head.length(), job.length() - 2);
        int at = 0;
        while (at < list.length()) {
            if (list.charAt(at) != '"') {
                return die("unknown job format");
            }
            StringBuilder arg = new StringBuilder();
            at++;
            while (at < list.length() && list.charAt(at) != '"') {
                char c = list.charAt(at++);
                if (c != '\\') {
                    arg.append(c);
                    continue;
                }
                if (at >= list.length()) {
                    return die("unknown job format");
                }
                char e = list.charAt(at++);
                switch (e) {
                    case 'n' -> arg.append('\n');
                    case 't' -> arg.append('\t');
                    case 'r' -> arg.append('\r');
                    case 'b' -> arg.append('\b');
                    case 'f' -> arg.append('\f');
                    case 'u' -> {
                        if (at + 4 > list.length()) {
                            return die("unknown job format");
                        }
                        arg.append((char) Integer.parseInt(list.substring(at, at + 4), 16));
                        at += 4;
                    }
                    default -> arg.append(e);
                }
            }
            if (at >= list.length()) {
                return die("unknown job format");
            }
            args.add(arg.toString());
            at++;
            if (list.startsWith(", ", at)) {
                at += 2;
            } else if (at != list.length()) {
                return die("unknown job format");
            }
        }
        return args.toArray(new String[0]);
    }

    private static String[] die(String why) {
        System.err.println("hazmat-agent: " + why);
        Runtime.getRuntime().halt(125);
        return new String[0];
    }
}
