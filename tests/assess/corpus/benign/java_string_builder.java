
public class Main {
    public static void main(String[] args) throws Exception {
        StringBuilder sb = new StringBuilder();
        for (int i = 0; i < 5; i++) sb.append(i).append(i < 4 ? "," : "\n");
        String s = sb.reverse().toString();
        System.out.print(s);
    }
}
