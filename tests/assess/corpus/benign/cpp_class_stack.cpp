#include <iostream>
#include <stdexcept>
#include <vector>

template <typename T>
class Stack {
public:
    void push(const T &v) { items_.push_back(v); }
    T pop() {
        if (items_.empty()) throw std::out_of_range("empty");
        T v = items_.back();
        items_.pop_back();
        return v;
    }
    bool empty() const { return items_.empty(); }
private:
    std::vector<T> items_;
};

int main() {
    Stack<int> s;
    for (int i = 0; i < 5; ++i) s.push(i * 10);
    while (!s.empty()) std::cout << s.pop() << ' ';
    std::cout << '\n';
}
