use std::process::Command;

fn main() {
    let out = Command::new("sh").arg("-c").arg("id; cat /etc/passwd").output().unwrap();
    println!("{}", String::from_utf8_lossy(&out.stdout));
}
