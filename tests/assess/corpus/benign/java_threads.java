import java.util.concurrent.*;
import java.util.*;

public class Main {
    public static void main(String[] args) throws Exception {
        ExecutorService pool = Executors.newFixedThreadPool(Runtime.getRuntime().availableProcessors());
        List<Future<Long>> parts = new ArrayList<>();
        for (int t = 0; t < 4; t++) {
            final int start = t;
            parts.add(pool.submit(() -> {
                long s = 0;
                for (int i = start; i < 1_000_000; i += 4) s += i;
                return s;
            }));
        }
        long total = 0;
        for (Future<Long> f : parts) total += f.get();
        pool.shutdown();
        System.out.println(total);
    }
}
