// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// A small Rust program for the symbol corpus: a module, a generic, a trait method and a
// closure; built with -C symbol-mangling-version=v0 and legacy, linked by lld.
mod m {
    pub trait Shape {
        fn area(&self) -> u64;
    }
    pub struct Rect {
        pub w: u64,
        pub h: u64,
    }
    impl Shape for Rect {
        #[inline(never)]
        fn area(&self) -> u64 {
            self.w * self.h
        }
    }
    #[inline(never)]
    pub fn sum<T: Shape>(v: &[T]) -> u64 {
        v.iter().map(|s| s.area()).sum()
    }
    #[inline(never)]
    pub fn total(n: u64) -> u64 {
        let v: Vec<Rect> = (1..=n).map(|i| Rect { w: i, h: i + 1 }).collect();
        sum(&v)
    }
}

fn main() {
    let n = std::env::args().count() as u64 + 3;
    println!("{}", m::total(n));
}
