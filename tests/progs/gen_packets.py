#!/usr/bin/env python3
"""Writes packets/*.bin: Ethernet frames for running the programs
(BPF_PROG_TEST_RUN in the kernel, `bpfvet run` in user space).

Each name says what the frame is (raw_* are not Ethernet frames); EXPECTED.md lists what the kernel
returned for each runnable program on each frame.  Addresses: 10.0.0.1 ->
10.0.0.2, fe80::1 -> fe80::2, MACs 02:00:00:00:00:01/02.
"""
import struct
from pathlib import Path

OUT = Path(__file__).resolve().parent / "packets"

ETH_IP, ETH_IPV6, ETH_ARP, ETH_8021Q, ETH_8021AD = 0x0800, 0x86DD, 0x0806, 0x8100, 0x88A8
TCP, UDP, ICMP = 6, 17, 1


def checksum(data: bytes) -> int:
    if len(data) % 2:
        data += b"\0"
    total = sum(struct.unpack(f"!{len(data) // 2}H", data))
    while total >> 16:
        total = (total & 0xFFFF) + (total >> 16)
    return ~total & 0xFFFF


def eth(proto: int, tags=()) -> bytes:
    frame = bytes.fromhex("020000000001") + bytes.fromhex("020000000002")
    for tpid, vid in tags:
        frame += struct.pack("!HH", tpid, vid)
    return frame + struct.pack("!H", proto)


def ipv4(proto, payload, ttl=64, options=b"", frag=0, tos=0, ihl=None,
         src=(10, 0, 0, 1), dst=(10, 0, 0, 2)) -> bytes:
    hl = ihl if ihl is not None else 5 + len(options) // 4
    hdr = struct.pack("!BBHHHBBH4s4s", 0x40 | hl, tos, 20 + len(options) + len(payload),
                      1, frag, ttl, proto, 0, bytes(src), bytes(dst)) + options
    hdr = hdr[:10] + struct.pack("!H", checksum(hdr)) + hdr[12:]
    return hdr + payload


def ipv6(next_header, payload, hop_limit=64) -> bytes:
    src = bytes.fromhex("fe800000000000000000000000000001")
    dst = bytes.fromhex("fe800000000000000000000000000002")
    return struct.pack("!IHBB16s16s", 0x60000000, len(payload), next_header, hop_limit,
                       src, dst) + payload


def tcp(dport, doff=5, sport=40000) -> bytes:
    return struct.pack("!HHIIBBHHH", sport, dport, 1, 0, doff << 4, 0x02, 1024, 0, 0) \
        + b"\x01" * max(0, doff * 4 - 20)


def udp(dport, length=None, sport=40000) -> bytes:
    body = b"ping"
    return struct.pack("!HHHH", sport, dport, length if length is not None else 8 + len(body), 0) + body


PACKETS = {
    "v4_tcp80": eth(ETH_IP) + ipv4(TCP, tcp(80)),
    "v4_tcp22": eth(ETH_IP) + ipv4(TCP, tcp(22)),
    "v4_tcp23": eth(ETH_IP) + ipv4(TCP, tcp(23)),
    "v4_tcp80_options": eth(ETH_IP) + ipv4(TCP, tcp(80, doff=8)),
    "v4_tcp80_doff4": eth(ETH_IP) + ipv4(TCP, tcp(80, doff=4)),
    "v4_tcp80_truncated": (eth(ETH_IP) + ipv4(TCP, tcp(80)))[:14 + 20 + 10],
    "v4_udp53": eth(ETH_IP) + ipv4(UDP, udp(53)),
    "v4_udp53_tos_cs1": eth(ETH_IP) + ipv4(UDP, udp(53), tos=0x20),
    "v4_udp9": eth(ETH_IP) + ipv4(UDP, udp(9)),
    "v4_udp53_badlen": eth(ETH_IP) + ipv4(UDP, udp(53, length=4)),
    "v4_udp53_padded": eth(ETH_IP) + ipv4(UDP, udp(53)) + b"\0" * 10,
    "v4_udp53_to_testnet": eth(ETH_IP) + ipv4(UDP, udp(53), dst=(192, 0, 2, 9)),
    "v4_icmp": eth(ETH_IP) + ipv4(ICMP, bytes([8, 0, 0xF7, 0xFF, 0, 0, 0, 0])),
    "v4_ipopts_tcp80": eth(ETH_IP) + ipv4(TCP, tcp(80), options=b"\x01\x01\x01\x00" * 2),
    "v4_ttl1": eth(ETH_IP) + ipv4(TCP, tcp(80), ttl=1),
    "v4_ttl0": eth(ETH_IP) + ipv4(TCP, tcp(80), ttl=0),
    "v4_fragment_first": eth(ETH_IP) + ipv4(TCP, tcp(23), frag=0x2000),
    "v4_fragment_later": eth(ETH_IP) + ipv4(TCP, b"\0" * 16, frag=0x0002),
    "v4_ihl4": eth(ETH_IP) + ipv4(TCP, tcp(80), ihl=4),
    "v4_bad_checksum": (lambda f: f[:24] + bytes([f[24] ^ 1]) + f[25:])(eth(ETH_IP) + ipv4(UDP, udp(53))),
    "v4_header_truncated": (eth(ETH_IP) + ipv4(TCP, tcp(80)))[:14 + 12],
    "vlan_v4_tcp80": eth(ETH_IP, [(ETH_8021Q, 5)]) + ipv4(TCP, tcp(80)),
    "qinq_v4_udp9": eth(ETH_IP, [(ETH_8021AD, 100), (ETH_8021Q, 5)]) + ipv4(UDP, udp(9)),
    "three_tags_v4_udp53": eth(ETH_IP, [(ETH_8021AD, 1), (ETH_8021Q, 2), (ETH_8021Q, 3)]) + ipv4(UDP, udp(53)),
    "vlan_truncated": eth(ETH_8021Q) + b"\x00",
    "v6_tcp23": eth(ETH_IPV6) + ipv6(TCP, tcp(23)),
    "v6_udp53": eth(ETH_IPV6) + ipv6(UDP, udp(53)),
    "v6_hop_limit1": eth(ETH_IPV6) + ipv6(UDP, udp(53), hop_limit=1),
    "v6_truncated": (eth(ETH_IPV6) + ipv6(UDP, udp(53)))[:14 + 30],
    "arp": eth(ETH_ARP) + bytes(28),
    "eth_only": eth(0x88B5),
    # Not Ethernet: inputs for the programs that read raw bytes (TLV walk,
    # Collatz, byte comparisons, the may_goto sum over the first u32).
    "raw_tlv_ok": bytes([1, 2, 0xAA, 0xBB, 3, 0, 0]) + bytes(9),
    "raw_tlv_overrun": bytes([1, 15]) + bytes(14),
    "raw_tlv_no_end": bytes([1, 0] * 8),
    "raw_collatz27": bytes([27]) + bytes(15),
    "raw_32_equal_bytes": bytes([0x55] * 32),
    "raw_sum_to_100000": struct.pack("<I", 100000) + bytes(12),
}

OUT.mkdir(exist_ok=True)
for name, frame in PACKETS.items():
    (OUT / f"{name}.bin").write_bytes(frame)
