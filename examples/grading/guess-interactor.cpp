// The guessing game's interactor in testlib's convention (examples/grading/judging.jsonl has
// the same in Python): the secret is the input file's number; at most 30 questions.
#include "testlib.h"
int main(int argc, char* argv[]) {
    registerInteraction(argc, argv);
    int secret = inf.readInt();
    for (int asked = 0; asked <= 30; asked++) {
        std::string what = ouf.readToken("[?!]");
        int guess = ouf.readInt();
        if (what == "!") {
            if (guess != secret) quitf(_wa, "%d is not the number", guess);
            quitf(_ok, "%d in %d questions", secret, asked);
        }
        if (asked == 30) quitf(_wa, "more than 30 questions");
        std::cout << (secret < guess ? "<" : secret > guess ? ">" : "=") << std::endl;
    }
}
