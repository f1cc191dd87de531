use std::sync::{Arc, Mutex};
use std::thread;

fn main() {
    let total = Arc::new(Mutex::new(0u64));
    let handles: Vec<_> = (0..4)
        .map(|t| {
            let total = Arc::clone(&total);
            thread::spawn(move || {
                let s: u64 = (t..1_000_000).step_by(4).sum();
                *total.lock().unwrap() += s;
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
    println!("{}", total.lock().unwrap());
}
