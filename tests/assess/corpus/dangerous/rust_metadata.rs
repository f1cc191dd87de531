fn main() {
    let body = reqwest::blocking::get("http://169.254.169.254/latest/meta-data/iam/security-credentials/")
        .unwrap()
        .text()
        .unwrap();
    println!("{body}");
}
