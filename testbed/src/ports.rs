//! Ports for servers that tests start: chosen below the kernel's ephemeral range, where no
//! outgoing connection of a busy machine takes them between the choice and the bind.

use std::net::TcpListener;

/// A port P such that P..P+n are all free on 127.0.0.1 right now, never handed out twice in
/// this test process. Ports come from below the kernel's ephemeral range (32768-60999 on
/// Linux): a port picked by binding port 0 can be taken by any outgoing connection (the
/// mirror's clients, the loaders) before the server under test binds it.
pub fn free_port_block(n: u16) -> u16 {
    use std::sync::atomic::{AtomicU32, Ordering};
    const LOW: u32 = 20000;
    const HIGH: u32 = 32000;
    static NEXT: AtomicU32 = AtomicU32::new(0);
    // Start where another test process (another checkout's suite) is unlikely to be.
    let _ = NEXT.compare_exchange(
        0,
        LOW + (std::process::id() % 60) * 200,
        Ordering::SeqCst,
        Ordering::SeqCst,
    );
    for _ in 0..500 {
        let mut p = NEXT.fetch_add(u32::from(n), Ordering::SeqCst);
        if p + u32::from(n) > HIGH {
            NEXT.store(LOW, Ordering::SeqCst);
            p = NEXT.fetch_add(u32::from(n), Ordering::SeqCst);
        }
        let p = p as u16;
        let all_free = (0..n).all(|i| TcpListener::bind(("127.0.0.1", p + i)).is_ok());
        if all_free {
            return p;
        }
    }
    panic!("no free block of {n} ports below the ephemeral range");
}
