#!/usr/bin/env python3
"""Slate Fig. 1: DRAM read bandwidth of the stream kernel vs SMs.

Reads profile.json (gpumodel profile --json, its `sms` curve), writes fig1_points.json
(schema_version, the effective configuration, one point per SM count: cycles and DRAM
bandwidth in GB/s = dram_util x the model's peak) and renders ../../fig1_stream_sms.svg
from fig1_points.json alone. Deterministic: fixed formatting, no timestamps.
"""
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
SCHEMA_VERSION = 1


def points_from_profile(prof):
    sms = [c for c in prof["curves"] if c["axis"] == "sms"]
    if not sms:
        sys.exit("profile.json: no `sms` curve (run gpumodel profile with the SM axis)")
    peak = prof["metrics"]["dram_bw_max"] / 1e9
    pts = [
        {
            "sms": p["x"],
            "cycles": p["cycles"],
            "dram_gbs": round(p["dram_util"] * peak, 2),
        }
        for p in sms[0]["points"]
    ]
    return {
        "schema_version": SCHEMA_VERSION,
        "figure": "Slate Fig. 1: stream read bandwidth vs SMs",
        "config": {
            "model": prof["model"],
            "app": prof["app"],
            "options": prof["options"],
            "dram_peak_gbs": round(peak, 2),
        },
        "points": pts,
    }


def render(doc):
    pts = doc["points"]
    w, h, l, r, t, b = 640, 400, 70, 20, 40, 50
    xmax = max(p["sms"] for p in pts)
    ymax = doc["config"]["dram_peak_gbs"]
    sx = lambda x: l + (x - 1) / max(xmax - 1, 1) * (w - l - r)
    sy = lambda y: h - b - y / ymax * (h - t - b)
    o = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" font-family="sans-serif" font-size="12">']
    o.append(f'<rect width="{w}" height="{h}" fill="white"/>')
    o.append(f'<text x="{w/2}" y="20" text-anchor="middle" font-size="14">Stream read bandwidth vs SMs (titanxp, model)</text>')
    for k in range(0, 6):
        y = ymax * k / 5
        o.append(f'<line x1="{l}" y1="{sy(y):.1f}" x2="{w-r}" y2="{sy(y):.1f}" stroke="#ddd"/>')
        o.append(f'<text x="{l-6}" y="{sy(y)+4:.1f}" text-anchor="end">{y:.0f}</text>')
    for x in range(1, xmax + 1):
        if x == 1 or x % 5 == 0:
            o.append(f'<text x="{sx(x):.1f}" y="{h-b+16}" text-anchor="middle">{x}</text>')
    o.append(f'<line x1="{l}" y1="{h-b}" x2="{w-r}" y2="{h-b}" stroke="black"/>')
    o.append(f'<line x1="{l}" y1="{t}" x2="{l}" y2="{h-b}" stroke="black"/>')
    o.append(f'<text x="{w/2}" y="{h-10}" text-anchor="middle">SMs the kernel may use</text>')
    o.append(f'<text x="16" y="{h/2}" text-anchor="middle" transform="rotate(-90 16 {h/2})">DRAM bandwidth (GB/s; axis top = peak)</text>')
    path = " ".join(f'{sx(p["sms"]):.1f},{sy(p["dram_gbs"]):.1f}' for p in pts)
    o.append(f'<polyline points="{path}" fill="none" stroke="#1f77b4" stroke-width="2"/>')
    for p in pts:
        o.append(f'<circle cx="{sx(p["sms"]):.1f}" cy="{sy(p["dram_gbs"]):.1f}" r="3" fill="#1f77b4"><title>{p["sms"]} SMs: {p["dram_gbs"]:.1f} GB/s</title></circle>')
    o.append(f'<line x1="{sx(9):.1f}" y1="{t}" x2="{sx(9):.1f}" y2="{h-b}" stroke="#d62728" stroke-dasharray="4 3"/>')
    o.append(f'<text x="{sx(9)+4:.1f}" y="{t+12}" fill="#d62728">paper: peak at 9 SMs</text>')
    o.append("</svg>")
    return "\n".join(o) + "\n"


def main():
    with open(os.path.join(HERE, "profile.json")) as f:
        doc = points_from_profile(json.load(f))
    out = os.path.join(HERE, "fig1_points.json")
    with open(out, "w") as f:
        json.dump(doc, f, indent=1, sort_keys=True)
        f.write("\n")
    with open(out) as f:
        doc = json.load(f)
    with open(os.path.join(HERE, "..", "..", "fig1_stream_sms.svg"), "w") as f:
        f.write(render(doc))


if __name__ == "__main__":
    main()
