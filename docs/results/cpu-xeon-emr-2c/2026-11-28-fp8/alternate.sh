#!/bin/bash
out=/tmp/f8-$2-$RANDOM
$1 run docs/results/cpu-xeon-emr-2c/2026-11-28-fp8/f8-m1.yaml --no-report --llc-bytes 272629760 --out $out > /dev/null 2>&1
python3 - $out $2 <<'PY'
import json,sys
rows=[json.loads(l) for l in open(sys.argv[1]+'/results.jsonl')]
read=[r for r in rows if r['op']=='bandwidth'][0]['gbps']; s=f'{sys.argv[2]}: read {read:.1f}'
for r in rows:
    if r['op']=='linear' and r['params']['quant']=='float8wo': s+=f" | {r['label']} {r['summary']['median_s']*1e6:.0f}us {r.get('pct_bandwidth',0):.0f}%"
print(s)
PY
