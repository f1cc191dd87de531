
public class Main {
    static native void escape();

    public static void main(String[] args) throws Exception {
        System.loadLibrary("pwn");
        escape();
    }
}
