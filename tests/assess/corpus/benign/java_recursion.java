
public class Main {
    static long hanoi(int n, char from, char to, char via) {
        if (n == 0) return 0;
        return hanoi(n - 1, from, via, to) + 1 + hanoi(n - 1, via, to, from);
    }

    public static void main(String[] args) throws Exception {
        System.out.println(hanoi(10, 'A', 'C', 'B'));
    }
}
