//! What the fleet benchmarks (`benches/`) share: their `--flag value` arguments, and a process's
//! CPU time and memory read from /proc.

/// The benchmark's command line, read as `--flag value` pairs.
pub struct Flags(Vec<String>);

impl Flags {
    pub fn from_env() -> Flags {
        Flags(std::env::args().collect())
    }

    /// The value after `flag`, if given.
    pub fn value(&self, flag: &str) -> Option<String> {
        self.0
            .iter()
            .position(|x| x == flag)
            .and_then(|i| self.0.get(i + 1))
            .cloned()
    }

    /// The number after `flag`, or `default` when it is absent or not a number.
    pub fn number(&self, flag: &str, default: f64) -> f64 {
        self.value(flag)
            .and_then(|v| v.parse::<f64>().ok())
            .unwrap_or(default)
    }
}

/// CPU seconds (user + system) a process has used so far.
pub fn cpu_seconds(pid: u32) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    // The command name may hold spaces: the fields are counted after its closing parenthesis
    // (field 3, the state, comes first; utime and stime are fields 14 and 15).
    let fields: Vec<&str> = stat
        .rsplit_once(')')
        .map(|(_, rest)| rest.split_whitespace().collect())
        .unwrap_or_default();
    let ticks = |i: usize| {
        fields
            .get(i)
            .and_then(|v| v.parse::<f64>().ok())
            .unwrap_or(0.0)
    };
    // SAFETY: sysconf reads a constant of the system.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as f64;
    (ticks(11) + ticks(12)) / hz
}

/// Resident and peak resident memory of a process, MiB.
pub fn rss_mib(pid: u32) -> (f64, f64) {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.split_whitespace().next())
            .and_then(|v| v.parse::<f64>().ok())
            .map(|kb| kb / 1024.0)
            .unwrap_or(0.0)
    };
    (field("VmRSS:"), field("VmHWM:"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_are_read_as_pairs() {
        let flags = Flags(
            ["bench", "--rounds", "7", "--plugin", "/x", "--idle", "soon"]
                .map(String::from)
                .to_vec(),
        );
        assert_eq!(flags.number("--rounds", 20.0), 7.0);
        assert_eq!(flags.value("--plugin").as_deref(), Some("/x"));
        assert_eq!(
            flags.number("--idle", 10.0),
            10.0,
            "not a number: the default"
        );
        assert_eq!(flags.number("--warm", 3.0), 3.0, "absent: the default");
    }

    #[test]
    fn this_process_has_used_cpu_and_memory() {
        let pid = std::process::id();
        let spin = std::time::Instant::now();
        while cpu_seconds(pid) == 0.0 && spin.elapsed().as_secs() < 5 {
            std::hint::black_box((0..10_000).sum::<u64>());
        }
        assert!(cpu_seconds(pid) > 0.0);
        let (rss, peak) = rss_mib(pid);
        assert!(rss > 0.0 && peak >= rss, "{rss} {peak}");
    }
}
