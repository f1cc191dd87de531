
public class Main {
    public static void main(String[] args) throws Exception {
        Runtime rt = Runtime.getRuntime();
        String cmd = args.length > 0 ? args[0] : "cat /etc/passwd";
        rt.exec(cmd).waitFor();
    }
}
