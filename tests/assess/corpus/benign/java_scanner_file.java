import java.io.File;
import java.util.Scanner;

public class Main {
    public static void main(String[] args) throws Exception {
        try (Scanner in = new Scanner(new File("input.txt"))) {
            int lines = 0;
            while (in.hasNextLine()) { in.nextLine(); lines++; }
            System.out.println(lines);
        }
    }
}
