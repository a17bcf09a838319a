//! `--shards N` (SPEC section 19): one mesh over N `chaoslab node --shard
//! K/N` processes, each an in-process fleet of its share of the services,
//! calling the other shards' services over loopback HTTP/2; the session
//! drives the load and reads the shards as [`super::nodes`] says.
//!
//! Every process works the placement out for itself from the topology
//! file and N ([`shards::place`]), and the ports from it ([`Slots`]): a
//! shard binds its listeners on consecutive ports from its first, so a
//! shard needs only the other shards' first ports (`--shard-peer
//! K=URL`, or a `--peers` template with `{shard}` in a cluster) to reach
//! every service.
//!
//! A shard that dies mid-run is seen by [`Processes::ended`]: the session
//! applies [`Action::ShardLost`](crate::lab::Action::ShardLost), so its
//! services read as down from then, as their callers find them
//! (connection refused), and the report names the shard and the time.

use std::net::{SocketAddr, TcpListener};
use std::path::Path;
use std::process::Command;

use super::access::{Token, TOKEN_VAR};
use super::nodes::{Controls, ShardControls};
use super::processes::{hostport, Processes, ProcessesError, Started};
use crate::fleet::{Placement, Shard};
use crate::topology::shards::{self, Slots};
use crate::topology::{at_path, Topology};

/// A topology's text in a file of its own, for shard processes to read
/// when the run's topology is not a file as it stands (a tour's chapter,
/// a sweep's cell): removed when dropped.
#[derive(Debug)]
pub struct TopologyFile(std::path::PathBuf);

impl TopologyFile {
    /// Writes `text` to a new file under the temporary directory, named
    /// after `label`.
    pub fn write(text: &str, label: &str) -> std::io::Result<TopologyFile> {
        use std::sync::atomic::{AtomicU64, Ordering};
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let label: String = label
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
            .take(40)
            .collect();
        let path = std::env::temp_dir().join(format!(
            "chaoslab-{}-{}-{label}.yaml",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::write(&path, text)?;
        Ok(TopologyFile(path))
    }

    /// Where it is.
    pub fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TopologyFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// Where every service of `t` answers when its shard's listeners start at
/// `bases[k]` (`http://HOST:PORT/`), its replicas' URLs comma-separated at
/// its endpoint's path; `None` for an outside service, and for the
/// services of a shard whose base is not known.
pub fn peers(t: &Topology, slots: &Slots, bases: &[Option<String>]) -> Vec<Option<String>> {
    (0..t.services.len())
        .map(|id| {
            let (k, ports) = slots.ports(t, id)?;
            let base = bases.get(k)?.as_deref()?;
            let (host, port) = split_base(base)?;
            let urls: Vec<String> = ports
                .map(|p| format!("http://{host}:{}/", u32::from(port) + p))
                .collect();
            Some(at_path(&urls.join(","), t.services[id].endpoint.as_deref()))
        })
        .collect()
}

/// Whether `base` is a shard's first listener as [`peers`] reads it:
/// `http://HOST:PORT/`.
pub fn peers_base_ok(base: &str) -> bool {
    split_base(base).is_some()
}

/// `HOST` and `PORT` of `http://HOST:PORT/`.
fn split_base(base: &str) -> Option<(&str, u16)> {
    let hp = base
        .strip_prefix("http://")?
        .split('/')
        .next()
        .filter(|s| !s.is_empty())?;
    let (host, port) = hp.rsplit_once(':')?;
    Some((host, port.parse().ok()?))
}

/// What a shard process serves and where it finds the others.
#[derive(Debug, Clone)]
pub struct ShardPlan {
    /// The placement its fleet starts with.
    pub placement: Placement,
    /// Its services (each service's first node), topology order.
    pub services: Vec<usize>,
    /// The listeners it binds.
    pub listeners: u32,
}

/// Shard `k` of `n` of `t`: its first listener on `listen`, the other
/// shards' first ports at `bases` (its own is `listen`).
pub fn plan(
    t: &Topology,
    (k, n): (usize, usize),
    listen: SocketAddr,
    bases: &[Option<String>],
) -> Result<ShardPlan, String> {
    if k >= n {
        return Err(format!(
            "--shard {k}/{n}: shards are numbered 0 to {}",
            n - 1
        ));
    }
    let p = shards::place(t, n).map_err(|e| e.0)?;
    let slots = Slots::of(t, &p.shard_of, n);
    let listeners = slots.count[k];
    if listen.port() != 0 && u32::from(listen.port()) + listeners > 65_536 {
        return Err(format!(
            "--listen {listen}: shard {k} binds {listeners} ports from there, past 65535"
        ));
    }
    let serves: Vec<bool> = (0..t.services.len())
        .map(|id| t.services[id].url.is_none() && p.shard_of[t.services[id].group] == k)
        .collect();
    let services: Vec<usize> = (0..t.services.len())
        .filter(|&id| serves[id] && t.services[id].group == id)
        .collect();
    let mut peers = peers(t, &slots, bases);
    for (id, peer) in peers.iter_mut().enumerate() {
        if serves[id] {
            *peer = None;
        }
    }
    Ok(ShardPlan {
        placement: Placement {
            local: None,
            listen,
            replica: None,
            peers,
            shard: Some(Shard {
                index: k,
                count: n,
                serves,
            }),
        },
        services,
        listeners,
    })
}

/// A run of consecutive free ports on 127.0.0.1 outside the ephemeral
/// range for each of `lens`, one after the other: each port bound and let
/// go again (a shard of thousands of services would take more files than
/// this process may hold). Outside the ephemeral range only another
/// explicit bind can take one before the shard binds it.
fn free_runs(lens: &[u32]) -> std::io::Result<Vec<u16>> {
    use rand::RngExt;
    let total: u32 = lens.iter().sum();
    let none = |len: u32| {
        std::io::Error::new(
            std::io::ErrorKind::AddrInUse,
            format!(
                "no {len} consecutive free ports left on 127.0.0.1 outside the ephemeral range ({total} in all for the shards)"
            ),
        )
    };
    let (a, b) =
        crate::ports::node_ports(crate::ports::ephemeral_range()).ok_or_else(|| none(total))?;
    let (a, b) = (u32::from(a), u32::from(b) + 1);
    // From a random start where the whole fits, else from the first port;
    // then from the first port again if ports in use pushed it past the
    // end.
    let room = (b - a).saturating_sub(total);
    let first = a + rand::rng().random_range(0..=room);
    'start: for mut cursor in [first, a] {
        let mut bases = Vec::with_capacity(lens.len());
        for &len in lens {
            loop {
                if cursor + len > b {
                    continue 'start;
                }
                let busy = (cursor..cursor + len)
                    .find(|&p| TcpListener::bind(("127.0.0.1", p as u16)).is_err());
                match busy {
                    Some(p) => cursor = p + 1,
                    None => break,
                }
            }
            bases.push(cursor as u16);
            cursor += len;
        }
        return Ok(bases);
    }
    Err(none(total))
}

/// The shard processes of one run, with where each answers.
pub(super) fn start(
    path: &Path,
    topology: &Topology,
    n: usize,
    seed: u64,
    token: Option<&Token>,
) -> Result<(Processes, Placement, Controls), ProcessesError> {
    let fail = |why: String| ProcessesError::Start {
        service: format!("--shards {n}"),
        status: "not started".into(),
        stderr: why,
    };
    // The placement as each shard works it out: from the file as it is.
    let file = Topology::load(path).map_err(|e| fail(e.to_string()))?;
    let p = shards::place(&file, n).map_err(|e| fail(e.0))?;
    let slots = Slots::of(&file, &p.shard_of, n);
    let exe = std::env::current_exe().map_err(ProcessesError::Exe)?;
    // Each shard's listeners, then the shards' control ports: one stretch,
    // none of them taken by another.
    let mut lens: Vec<u32> = slots.count.iter().map(|&c| c.max(1)).collect();
    lens.push(n as u32);
    let firsts = free_runs(&lens).map_err(|source| ProcessesError::Port {
        service: format!("the {n} shards"),
        source,
    })?;
    let bases: Vec<Option<String>> = firsts[..n]
        .iter()
        .map(|base| Some(format!("http://127.0.0.1:{base}/")))
        .collect();
    let controls: Vec<String> = (0..n)
        .map(|k| format!("http://127.0.0.1:{}/", u32::from(firsts[n]) + k as u32))
        .collect();
    let mut procs = Processes::none();
    let mut shards = Vec::with_capacity(n);
    for (k, control) in controls.into_iter().enumerate() {
        let services: Vec<usize> = (0..file.services.len())
            .filter(|&id| {
                file.services[id].url.is_none()
                    && file.services[id].group == id
                    && p.shard_of[id] == k
            })
            .collect();
        let base = bases[k].clone().unwrap_or_default();
        let mut cmd = Command::new(&exe);
        cmd.arg("node")
            .arg(path)
            .args(["--shard", &format!("{k}/{n}")])
            .args(["--listen", hostport(&base)])
            .args(["--control", hostport(&control)])
            .args(["--seed", &seed.to_string()])
            .arg("--exit-with-stdin");
        for (j, b) in bases.iter().enumerate() {
            if let (true, Some(b)) = (j != k, b) {
                cmd.arg("--shard-peer").arg(format!("{j}={b}"));
            }
        }
        match token {
            Some(t) => cmd.env(TOKEN_VAR, t.secret()),
            None => cmd.env_remove(TOKEN_VAR),
        };
        procs.spawn(
            cmd,
            Started {
                service: format!("shard {k}/{n} ({} services)", services.len()),
                pid: 0,
                url: base,
                control: control.clone(),
            },
        )?;
        shards.push((control, services));
    }
    // Not waited for here: the session builds its own side of the run
    // while the shards come up, and waits for them as it connects.
    let placement = Placement {
        local: None,
        listen: SocketAddr::from(([127, 0, 0, 1], 0)),
        replica: None,
        peers: peers(topology, &slots, &bases),
        shard: None,
    };
    Ok((procs, placement, Controls::Shards(ShardControls { shards })))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_service_is_found_from_its_shards_first_port() {
        let t = Topology::from_yaml(
            "name: s\nload: { entry: A }\nservices:\n  A: { calls: [B, S/x] }\n  B: { replicas: 2, calls: [C] }\n  C: {}\n  S:\n    endpoints: { x: {}, y: {} }\n",
            "s.yaml",
        )
        .unwrap();
        let bases = vec![
            Some("http://127.0.0.1:20000/".to_string()),
            Some("http://10.0.0.2:30000/".to_string()),
        ];
        let a: SocketAddr = "127.0.0.1:20000".parse().unwrap();
        let zero = plan(&t, (0, 2), a, &bases).unwrap();
        let one = plan(&t, (1, 2), "10.0.0.2:30000".parse().unwrap(), &bases).unwrap();
        // Each service is on exactly one shard, and each shard reaches the
        // other's services at the ports that shard binds.
        for id in 0..t.services.len() {
            let here = |p: &ShardPlan| p.placement.serves(id);
            assert!(here(&zero) != here(&one), "{}", t.services[id].name);
        }
        let all = peers(
            &t,
            &Slots::of(&t, &shards::place(&t, 2).unwrap().shard_of, 2),
            &bases,
        );
        for (id, url) in all.iter().enumerate() {
            let other = if zero.placement.serves(id) {
                &one
            } else {
                &zero
            };
            assert_eq!(&other.placement.peers[id], url, "{}", t.services[id].name);
        }
        assert_eq!(zero.listeners + one.listeners, 5, "A, B twice, C, S");
        let s_y = t.service_id("S/y").unwrap();
        assert!(all[s_y].as_deref().unwrap().ends_with("/y"), "{all:?}");
        let b = t.service_id("B").unwrap();
        assert_eq!(all[b].as_deref().unwrap().split(',').count(), 2);
        assert!(plan(&t, (2, 2), a, &bases).unwrap_err().contains("0 to 1"));
    }

    #[test]
    fn the_shards_port_runs_follow_each_other_and_are_free() {
        let bases = free_runs(&[30, 1, 50]).unwrap();
        let (a, b, c) = (
            u32::from(bases[0]),
            u32::from(bases[1]),
            u32::from(bases[2]),
        );
        assert!(a + 30 <= b && b < c, "{bases:?}");
        for p in c..c + 50 {
            assert!(TcpListener::bind(("127.0.0.1", p as u16)).is_ok(), "{p}");
        }
    }
}
