//! The POSIX shell functions every job script starts with: a job's identity, its
//! processes and how they are signalled.

/// POSIX shell functions shared by the wrapper, status and cancel scripts. Where
/// `/proc` exists they read `/proc` only; elsewhere they use `ps`.
///
/// - `ob_identity PID` prints the identity of process `PID` in the form of
///   `job.start`, and fails when no process has that ID or
///   its identity cannot be read.
/// - `ob_leader DIR PID` compares the identity of `PID` with the one recorded in
///   `DIR/job.start`: `0` when they match, `2` when no process has that ID (the
///   leader is gone), `1` otherwise, which includes a missing or unreadable
///   `job.start` and a process whose identity cannot be read.
/// - `ob_members PGID` prints the live members of process group `PGID`: zombies
///   (state `Z`) do not count, so a group left with zombies under a `PID 1` that
///   does not reap them is gone.
/// - `ob_marked DIR` prints the live processes whose environment holds the job's
///   run marker (its `job.marker` file), from `/proc/<pid>/environ`;
///   none without `/proc`.
/// - `ob_group_ours DIR PID` succeeds when the process group `PID` is the job's:
///   its leader's identity matches, or the leader is gone while `DIR/job.start`
///   exists. A process group ID is never reused while any member of the group lives
///   (Linux `alloc_pid` keeps it reserved), so a live group without its leader is
///   still the job's.
/// - `ob_leader_lives DIR PID` succeeds when `PID` lives, is no zombie and has the
///   `/proc` identity recorded in `DIR/job.start`; it runs shell built-ins only, no
///   process, so the common answer of a status poll costs no fork.
/// - `job_alive DIR PID` succeeds while any of the job's processes lives: the
///   leader itself (`ob_leader_lives`, checked first), a marked process, or a live
///   member of its group when the group is the job's.
/// - `ob_survivors DIR PID` prints those processes, one ID a line.
/// - `ob_signal SIGNAL DIR PID` sends `SIGNAL` (a name such as `TERM`) to the
///   job's group (`kill -s SIGNAL -- -PID`, only when the group is the job's) and to
///   every marked process.
/// - `group_signal SIGNAL PID` sends `SIGNAL` to the whole process group `PID` and
///   ignores a group that is already gone.
pub const GROUP_SIGNAL: &str = r#"ob_stat_of() {
  [ -r "/proc/$1/stat" ] || return 1
  IFS= read -r ob_stat < "/proc/$1/stat" || return 1
  ob_rest=${ob_stat##*) }
  set -f
  # shellcheck disable=SC2086
  set -- $ob_rest
  set +f
  [ "$#" -ge 20 ] || return 1
  ob_state=$1
  shift 19
  ob_t=$1
}
ob_boot_id() {
  ob_b=-
  if [ -r /proc/sys/kernel/random/boot_id ]; then
    IFS= read -r ob_b < /proc/sys/kernel/random/boot_id || ob_b=-
    [ -n "$ob_b" ] || ob_b=-
  fi
}
ob_identity() {
  if [ -d /proc/self ]; then
    ob_stat_of "$1" || return 1
    ob_boot_id
    printf 'proc %s %s\n' "$ob_b" "$ob_t"
  else
    ob_l=$(LC_ALL=C ps -o lstart= -p "$1" 2>/dev/null) || return 1
    set -f
    # shellcheck disable=SC2086
    set -- $ob_l
    set +f
    [ "$#" -gt 0 ] || return 1
    printf 'ps %s\n' "$*"
  fi
}
ob_leader_lives() {
  [ -r "$1/job.start" ] || return 1
  IFS= read -r ob_then < "$1/job.start" || return 1
  ob_stat_of "$2" || return 1
  case $ob_state in Z|X) return 1 ;; esac
  ob_boot_id
  [ "$ob_then" = "proc $ob_b $ob_t" ]
}
ob_leader() {
  [ -r "$1/job.start" ] || return 1
  ob_then=
  IFS= read -r ob_then < "$1/job.start" || [ -n "$ob_then" ] || return 1
  if ob_now=$(ob_identity "$2"); then
    case $ob_then in
      'proc '*|'ps '*) [ "$ob_now" = "$ob_then" ] && return 0 ;;
      ''|*[!0-9]*) ;;
      *) case $ob_now in 'proc '*) [ "${ob_now##* }" = "$ob_then" ] && return 0 ;; esac ;;
    esac
    return 1
  fi
  kill -s 0 "$2" 2>/dev/null && return 1
  [ -d /proc/self ] && [ -e "/proc/$2" ] && return 1
  return 2
}
ob_members() {
  kill -s 0 -- "-$1" 2>/dev/null || return 0
  ob_g=$1
  if [ -d /proc/self ]; then
    for ob_f in /proc/[0-9]*/stat; do
      { IFS= read -r ob_s < "$ob_f"; } 2>/dev/null || continue
      ob_pid=${ob_f#/proc/}
      ob_pid=${ob_pid%/stat}
      ob_s=${ob_s##*) }
      set -f
      # shellcheck disable=SC2086
      set -- $ob_s
      set +f
      [ "$#" -ge 3 ] && [ "$3" = "$ob_g" ] && [ "$1" != Z ] && [ "$1" != X ] && printf '%s\n' "$ob_pid"
    done
  else
    LC_ALL=C ps -A -o pid= -o pgid= -o stat= 2>/dev/null |
      awk -v g="$ob_g" '$2 == g && $3 !~ /^Z/ { print $1 }'
  fi
  return 0
}
ob_marked() {
  [ -d /proc/self ] && [ -r "$1/job.marker" ] || return 0
  ob_m=
  IFS= read -r ob_m < "$1/job.marker" || [ -n "$ob_m" ] || return 0
  case $ob_m in ''|*[!0-9a-f]*) return 0 ;; esac
  grep -l -z -x -F -e "OB_RUN_MARKER=$ob_m" /proc/[0-9]*/environ 2>/dev/null |
    while IFS= read -r ob_e; do
      ob_pid=${ob_e#/proc/}
      ob_pid=${ob_pid%/environ}
      [ "$ob_pid" = "$$" ] && continue
      { IFS= read -r ob_s < "/proc/$ob_pid/stat"; } 2>/dev/null || continue
      ob_s=${ob_s##*) }
      case $ob_s in Z*|X*) continue ;; esac
      printf '%s\n' "$ob_pid"
    done
  return 0
}
ob_group_ours() {
  ob_leader "$1" "$2"
  [ "$?" -ne 1 ]
}
ob_survivors() {
  { ob_marked "$1"; if ob_group_ours "$1" "$2"; then ob_members "$2"; fi; } | awk '!ob_seen[$0]++'
}
job_alive() {
  ob_leader_lives "$1" "$2" && return 0
  [ -n "$(ob_marked "$1")" ] && return 0
  ob_group_ours "$1" "$2" || return 1
  [ -n "$(ob_members "$2")" ]
}
group_signal() {
  kill -s "$1" -- "-$2" 2>/dev/null || true
}
ob_signal() {
  if ob_group_ours "$2" "$3"; then group_signal "$1" "$3"; fi
  for ob_q in $(ob_marked "$2"); do kill -s "$1" "$ob_q" 2>/dev/null || true; done
}
"#;
