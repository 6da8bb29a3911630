#!/usr/bin/env python3
"""Time `reconcile seed FILE` until its ticket is written, for several
binaries and flag sets, alternating their order each round.

usage: python3 testbed/seedtime.py FILE ROUNDS NAME=BINARY[:FLAG[:FLAG...]] ...

Each NAME is a binary with extra seed flags, e.g.

  go build -o /tmp/reconcile ./cmd/reconcile
  head -c 1073741824 /dev/urandom > /tmp/g1.bin; cat /tmp/g1.bin > /dev/null
  python3 testbed/seedtime.py /tmp/g1.bin 6 fixed=/tmp/reconcile:--block-size:256KiB cdc=/tmp/reconcile

prints, per NAME, the median wall time until the ticket, the seed's CPU
seconds (utime + stime from /proc) and the median of the per-round ratios to
the first NAME. The seed listens on 127.0.0.1 only and is stopped with
SIGINT after each run.
"""
import os, signal, statistics, subprocess, sys, tempfile, time

if len(sys.argv) < 4:
    sys.exit(__doc__)
path, rounds, cfgs = sys.argv[1], int(sys.argv[2]), []
for a in sys.argv[3:]:
    name, rest = a.split("=", 1)
    parts = rest.split(":")
    cfgs.append((name, parts[0], [x for x in parts[1:] if x]))
ticket = os.path.join(tempfile.mkdtemp(), "ticket")


def run(binary, extra):
    if os.path.exists(ticket):
        os.remove(ticket)
    t0 = time.monotonic()
    p = subprocess.Popen([binary, "seed", path, "--ticket-file", ticket, "-q", "--listen", "/ip4/127.0.0.1/tcp/0",
                          "--no-dht", "--no-mdns"] + extra, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    while not (os.path.exists(ticket) and os.path.getsize(ticket) > 0):
        if p.poll() is not None:
            sys.exit(f"{binary} seed exited with {p.returncode}")
        time.sleep(0.002)
    wall = time.monotonic() - t0
    f = open(f"/proc/{p.pid}/stat").read().rsplit(")", 1)[1].split()
    cpu = (int(f[11]) + int(f[12])) / os.sysconf("SC_CLK_TCK")
    p.send_signal(signal.SIGINT)
    p.wait()
    return wall, cpu


res = {c[0]: [] for c in cfgs}
for i in range(rounds):
    for name, b, extra in (cfgs if i % 2 == 0 else cfgs[::-1]):
        res[name].append(run(b, extra))
base = cfgs[0][0]
for name, _, _ in cfgs:
    wall = [x[0] for x in res[name]]
    cpu = [x[1] for x in res[name]]
    ratio = [a[0] / b[0] for a, b in zip(res[name], res[base])]
    print(f"{name:8s} wall {statistics.median(wall):.3f} s ({' '.join(f'{x:.2f}' for x in wall)})"
          f"  CPU {statistics.median(cpu):.2f} s  /{base} {statistics.median(ratio):.2f}")
