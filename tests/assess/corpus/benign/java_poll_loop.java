import java.util.concurrent.*;

public class Main {
    public static void main(String[] args) throws Exception {
        BlockingQueue<Integer> q = new LinkedBlockingQueue<>();
        Thread producer = new Thread(() -> { for (int i = 0; i < 5; i++) q.add(i); q.add(-1); });
        producer.start();
        while (true) {
            int v = q.take();
            if (v < 0) break;
            System.out.println("got " + v);
        }
        producer.join();
    }
}
