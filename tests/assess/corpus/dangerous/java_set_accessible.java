import java.lang.reflect.Field;

public class Main {
    public static void main(String[] args) throws Exception {
        Field f = System.class.getDeclaredField("props");
        f.setAccessible(true);
        System.out.println(f.get(null));
    }
}
