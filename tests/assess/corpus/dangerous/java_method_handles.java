import java.lang.invoke.*;

public class Main {
    public static void main(String[] args) throws Exception {
        MethodHandles.Lookup lookup = MethodHandles.privateLookupIn(String.class, MethodHandles.lookup());
        VarHandle value = lookup.findVarHandle(String.class, "value", byte[].class);
        System.out.println(value.get("x"));
    }
}
