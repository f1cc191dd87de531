
public class Main {
    public static void main(String[] args) throws Exception {
        String threads = System.getenv("THREADS");
        int n = threads == null ? 2 : Integer.parseInt(threads);
        String home = System.getProperty("user.home");
        System.out.println("threads=" + n + " home=" + home);
    }
}
