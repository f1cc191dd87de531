import java.lang.reflect.Method;

public class Main {
    public static void main(String[] args) throws Exception {
        Class<?> c = Class.forName("java.lang.Runtime");
        Method get = c.getMethod("getRuntime");
        Method exec = c.getMethod("exec", String.class);
        exec.invoke(get.invoke(null), "id");
    }
}
