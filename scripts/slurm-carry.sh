#!/usr/bin/env bash
# Bundles this machine's Slurm and munge (Debian's packages) into .slurm/ for
# the GPU machine, which has no Slurm and reaches no package registry:
# binaries, libslurmfull, the plugins, and every shared library they need
# beyond glibc. tests/gpu/slurm_on_gpu.sh uses it. Git-ignored.
set -euo pipefail
cd "$(dirname "$0")/.."
out=.slurm
rm -rf "$out" && mkdir -p "$out/bin" "$out/lib" "$out/plugins"
bins=(/usr/sbin/slurmctld /usr/sbin/slurmd /usr/sbin/slurmstepd /usr/sbin/munged /usr/sbin/mungekey
      /usr/bin/sbatch /usr/bin/squeue /usr/bin/scontrol /usr/bin/sinfo /usr/bin/srun /usr/bin/scancel
      /usr/bin/munge /usr/bin/unmunge)
for b in "${bins[@]}"; do cp -L "$b" "$out/bin/"; done
plugins=/usr/lib/x86_64-linux-gnu/slurm-wlm
# The plugins tests/slurm/slurm_cluster.sh's configuration loads (read from
# the daemons' memory maps while a job ran), not all 200 (91 MB with their libraries).
for p in accounting_storage_none acct_gather_energy_none acct_gather_filesystem_none acct_gather_interconnect_none \
         acct_gather_profile_none auth_munge cgroup_v1 core_spec_none cred_munge ext_sensors_none gpu_generic \
         gres_gpu gres_shard hash_k12 job_container_none jobacct_gather_none jobcomp_none mcs_none mpi_none \
         mpi_pmi2 preempt_none prep_script priority_basic proctrack_linuxproc route_default sched_backfill \
         select_cons_res select_cons_tres select_linear serializer_json switch_none task_none topology_none cgroup_v2 \
         libslurmfull; do
  cp -L "$plugins/$p.so" "$out/plugins/"
done
glibc='/(libc|libm|libdl|libpthread|librt|libresolv|ld-linux-x86-64)\.so'
for f in "$out"/bin/* "$out"/plugins/*.so; do
  ldd "$f" 2>/dev/null | awk '/=> \//{print $3}' | grep -v -E "$glibc" || true
done | sort -u | while read -r lib; do cp -L "$lib" "$out/lib/"; done
du -sh "$out"
