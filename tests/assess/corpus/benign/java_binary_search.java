import java.util.Arrays;

public class Main {
    public static void main(String[] args) throws Exception {
        int[] a = {5, 1, 9, 3, 7};
        Arrays.sort(a);
        System.out.println(Arrays.toString(a) + " " + Arrays.binarySearch(a, 7));
    }
}
