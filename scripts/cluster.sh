#!/usr/bin/env bash
# A wirekafka cluster to try on one machine: a real Apache ZooKeeper (scripts/zookeeper.py) on
# 127.0.0.1:2181 and three brokers on 127.0.0.1:9092-9094 joined to it with Kafka's ZooKeeper-mode
# keys (broker.id, zookeeper.connect, default.replication.factor=3, min.insync.replicas=2).
#
#   scripts/cluster.sh start    # start ZooKeeper and the brokers, return once all are registered
#   scripts/cluster.sh status   # which processes run, who is controller
#   scripts/cluster.sh stop     # controlled shutdown of each broker (SIGTERM), then ZooKeeper
#
# Data and logs go to ${WIREKAFKA_CLUSTER_DIR:-./cluster-data}; ports from ${WIREKAFKA_ZK_PORT:-2181}
# and ${WIREKAFKA_FIRST_PORT:-9092}. Bootstrap with 127.0.0.1:9092,127.0.0.1:9093,127.0.0.1:9094.
set -euo pipefail
cd "$(dirname "$0")/.."
DIR=${WIREKAFKA_CLUSTER_DIR:-$PWD/cluster-data}
ZK_PORT=${WIREKAFKA_ZK_PORT:-2181}
FIRST=${WIREKAFKA_FIRST_PORT:-9092}
VENV=${WIREKAFKA_VENV:-.venv}
BROKERS=(1 2 3)

alive() { [[ -f $1 ]] && kill -0 "$(cat "$1")" 2>/dev/null; }

wait_for() {  # wait_for SECONDS DESCRIPTION COMMAND...
    local limit=$1 what=$2; shift 2
    for _ in $(seq 1 $((limit * 10))); do
        if "$@" >/dev/null 2>&1; then return 0; fi
        sleep 0.1
    done
    echo "cluster: timed out waiting for $what" >&2
    return 1
}

start() {
    bash scripts/setup.sh
    "$VENV/bin/python" scripts/zookeeper.py ensure >/dev/null
    mkdir -p "$DIR"
    if ! alive "$DIR/zookeeper.pid"; then
        nohup "$VENV/bin/python" scripts/zookeeper.py serve --port "$ZK_PORT" --dir "$DIR/zookeeper" \
            >"$DIR/zookeeper.log" 2>&1 &
        echo $! >"$DIR/zookeeper.pid"
        wait_for 60 "ZooKeeper" grep -q "serving" "$DIR/zookeeper.log"
    fi
    for id in "${BROKERS[@]}"; do
        local port=$((FIRST + id - 1))
        if alive "$DIR/broker-$id.pid"; then continue; fi
        nohup "$VENV/bin/wirekafka" serve \
            --override broker.id="$id" \
            --override zookeeper.connect="127.0.0.1:$ZK_PORT/wirekafka" \
            --override listeners="PLAINTEXT://127.0.0.1:$port" \
            --override log.dirs="$DIR/broker-$id" \
            --override default.replication.factor=3 \
            --override min.insync.replicas=2 \
            --override offsets.topic.replication.factor=3 \
            --override transaction.state.log.replication.factor=3 \
            --override transaction.state.log.min.isr=2 \
            >"$DIR/broker-$id.log" 2>&1 &
        echo $! >"$DIR/broker-$id.pid"
    done
    for id in "${BROKERS[@]}"; do
        wait_for 60 "broker $id" grep -q "listening on" "$DIR/broker-$id.log"
    done
    echo "cluster: ZooKeeper on 127.0.0.1:$ZK_PORT, brokers on 127.0.0.1:$FIRST-$((FIRST + ${#BROKERS[@]} - 1)), data in $DIR"
}

stop() {
    for id in "${BROKERS[@]}"; do
        if alive "$DIR/broker-$id.pid"; then kill -TERM "$(cat "$DIR/broker-$id.pid")"; fi
    done
    for id in "${BROKERS[@]}"; do
        local pid_file="$DIR/broker-$id.pid"
        if alive "$pid_file"; then
            wait_for 60 "broker $id to stop" bash -c "! kill -0 $(cat "$pid_file")" || kill -KILL "$(cat "$pid_file")"
        fi
        rm -f "$pid_file"
    done
    if alive "$DIR/zookeeper.pid"; then
        kill -TERM "$(cat "$DIR/zookeeper.pid")"
        wait_for 30 "ZooKeeper to stop" bash -c "! kill -0 $(cat "$DIR/zookeeper.pid")" || true
    fi
    rm -f "$DIR/zookeeper.pid"
    echo "cluster: stopped"
}

status() {
    for name in zookeeper broker-1 broker-2 broker-3; do
        if alive "$DIR/$name.pid"; then echo "$name: running (pid $(cat "$DIR/$name.pid"))"; else echo "$name: stopped"; fi
    done
}

case "${1:-}" in
    start) start ;;
    stop) stop ;;
    status) status ;;
    *) echo "usage: $0 start|stop|status" >&2; exit 2 ;;
esac
