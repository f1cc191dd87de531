fn main() {
    let r = unsafe { libc::syscall(libc::SYS_unshare, libc::CLONE_NEWUSER) };
    println!("{r}");
}
