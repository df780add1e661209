#!/bin/bash
#
# devstack/plugin.sh -- DevStack entry point of minisched.
#
# stack.sh, unstack.sh and clean.sh source this file with a mode and a phase
# ("stack install", "stack post-config", "stack extra", "unstack", "clean"),
# after devstack/settings; they run with errexit set, so a failing command
# stops the run.

# Save trace setting
_XTRACE_MINISCHED_PLUGIN=$(set +o | grep xtrace)
set -o xtrace

source "$MINISCHED_PLUGIN_DIR/lib/minisched"

if is_service_enabled minisched-conductor minisched-scheduler minisched-compute; then

    if [[ "$1" == "stack" && "${2:-}" == "install" ]]; then
        echo_summary "Installing minisched"
        install_minisched

    elif [[ "$1" == "stack" && "${2:-}" == "post-config" ]]; then
        # RabbitMQ and the database server run by now.
        echo_summary "Configuring minisched"
        configure_minisched
        echo_summary "Initializing minisched databases and cells"
        init_minisched

    elif [[ "$1" == "stack" && "${2:-}" == "extra" ]]; then
        echo_summary "Starting minisched"
        start_minisched
        # Host discovery reads the API database: controller only. Computes of
        # other nodes join later; map them with "minisched-manage cell
        # discover_hosts" on the controller, or set [scheduler]
        # discover_hosts_in_cells_interval.
        if is_service_enabled minisched-conductor; then
            wait_for_minisched_computes
            discover_minisched_hosts
        fi
    fi

    if [[ "$1" == "unstack" ]]; then
        echo_summary "Stopping minisched"
        stop_minisched
    fi

    if [[ "$1" == "clean" ]]; then
        # clean.sh has run unstack.sh first.
        echo_summary "Removing minisched configuration and state"
        cleanup_minisched
    fi
fi

# Restore xtrace
$_XTRACE_MINISCHED_PLUGIN

# Tell emacs to use shell-script-mode
## Local variables:
## mode: shell-script
## End:
