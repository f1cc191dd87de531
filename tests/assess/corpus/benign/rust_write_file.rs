use std::fs::{self, File};
use std::io::Write;

fn main() -> std::io::Result<()> {
    fs::create_dir_all("out")?;
    let mut f = File::create("out/squares.txt")?;
    for i in 1..=10 {
        writeln!(f, "{}", i * i)?;
    }
    fs::write("/tmp/done.txt", "ok")?;
    Ok(())
}
