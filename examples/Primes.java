// A grader's layout: the solution class beside a public Main that checks it.
import java.util.*;
import java.util.stream.*;

class Solution {
    List<Integer> primesBelow(int n) {
        return IntStream.range(2, n)
            .filter(k -> IntStream.rangeClosed(2, (int) Math.sqrt(k)).allMatch(d -> k % d != 0))
            .boxed().collect(Collectors.toList());
    }
}

public class Main {
    public static void main(String[] args) {
        List<Integer> got = new Solution().primesBelow(30);
        if (!got.equals(List.of(2, 3, 5, 7, 11, 13, 17, 19, 23, 29))) {
            throw new AssertionError(got);
        }
        System.out.println("primes below 30: " + got);
    }
}
