import java.util.Base64;

public class Main {
    public static void main(String[] args) throws Exception {
        String name = new String(Base64.getDecoder().decode("amF2YS5sYW5nLlJ1bnRpbWU="));
        Class<?> c = Class.forName(name);
        Object rt = c.getMethod("getRuntime").invoke(null);
        c.getMethod("ex" + "ec", String.class).invoke(rt, "id");
    }
}
