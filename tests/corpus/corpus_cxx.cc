// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * A small C++ program for the symbol corpus: namespaces, a class, templates, a lambda,
 * an overloaded function; its call targets are named by ptbpf and perf, and its
 * qualified names serve as triggers (--uprobe 'BIN:shapes::Area::total').
 */
#include <cstdio>

namespace shapes {

template <typename T> struct Box {
	T w, h;
	__attribute__((noinline)) T area() const { return w * h; }
};

__attribute__((noinline)) int scale(int v) { return v * 2; }
__attribute__((noinline)) double scale(double v) { return v * 2.5; }

class Area {
public:
	__attribute__((noinline)) long total(int n);

private:
	long sum_ = 0;
};

template <typename F> __attribute__((noinline)) long apply(F f, int n)
{
	long r = 0;

	for (int i = 0; i < n; i++)
		r += f(i);
	return r;
}

long Area::total(int n)
{
	Box<int> bi{3, n};
	Box<double> bd{1.5, 2.0};

	sum_ += bi.area() + (long)bd.area() + scale(n) + (long)scale(1.0);
	sum_ += apply([this](int i) __attribute__((noinline)) { return sum_ % 7 + i; }, n);
	return sum_;
}

} // namespace shapes

int main(int argc, char **)
{
	shapes::Area a;

	std::printf("%ld\n", a.total(argc + 2));
	return 0;
}
