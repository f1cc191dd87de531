use std::env;

fn main() {
    let args: Vec<String> = env::args().collect();
    let name = args.get(1).cloned().unwrap_or_else(|| "world".to_string());
    let threads = env::var("THREADS").unwrap_or_else(|_| "2".into());
    println!("hello {name}, threads={threads}");
}
