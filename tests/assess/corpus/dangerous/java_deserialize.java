import java.io.*;

public class Main {
    public static void main(String[] args) throws Exception {
        try (ObjectInputStream in = new ObjectInputStream(new FileInputStream("payload.bin"))) {
            Object o = in.readObject();
            System.out.println(o);
        }
    }
}
