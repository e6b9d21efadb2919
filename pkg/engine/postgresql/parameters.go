package postgresql

import (
	"slices"

	"github.com/dbcontroller/database-controller/pkg/engine"
)

// parameters are spec.parameters on PostgreSQL: at start as -c name=value,
// live through ALTER SYSTEM and a reload (package pgsql).
var parameters = engine.Parameters{
	Server: "postgres",
	Args: func(name, value string) []string {
		return []string{"-c", name + "=" + value}
	},
	Given:    given,
	AtStart:  AtStart,
	Owned:    owned,
	Name:     engine.LowerCaseName,
	NameRule: engine.LowerCaseNameRule,
}

// given reads the -c name=value pairs of a server's arguments, but the
// controller's own.
func given(args []string) map[string]string { return engine.GivenAfter("-c", args, owned) }

// AtStart reports whether PostgreSQL reads name only at start: its
// "postmaster" parameters from 15 to 18, and any name it does not know
// (an extension's, such as pg_stat_statements.max, is known to a server
// only once the extension is loaded; any parameter may be given at start).
func AtStart(name string) bool {
	if slices.Contains(atStart, name) {
		return true
	}
	_, known := slices.BinarySearch(live, name)
	return !known
}

// owned are the parameters the controller sets, or that the pods,
// replication, archiving, restores or TLS depend on:
//   - where the server listens and keeps its files;
//   - logging to the pod's log, which the reseed's evidence is read from;
//   - replication (cluster_name names a pod to itself; wal_log_hints lets
//     pg_rewind rejoin a former primary; the init script writes
//     primary_conninfo) and the fence (default_transaction_read_only);
//   - archiving and point-in-time restores;
//   - TLS, which the controller will set up.
var owned = []string{
	"listen_addresses", "port", "unix_socket_directories", "unix_socket_group", "unix_socket_permissions",
	"data_directory", "config_file", "hba_file", "ident_file", "external_pid_file",
	"logging_collector",
	"cluster_name", "hot_standby", "hot_standby_feedback", "wal_log_hints", "wal_keep_size", "wal_level", "max_wal_senders",
	"primary_conninfo", "primary_slot_name", "promote_trigger_file",
	"restore_command", "archive_cleanup_command", "recovery_end_command",
	"recovery_target", "recovery_target_action", "recovery_target_inclusive", "recovery_target_lsn",
	"recovery_target_name", "recovery_target_time", "recovery_target_timeline", "recovery_target_xid",
	"archive_mode", "archive_command", "archive_library", "archive_timeout",
	"default_transaction_read_only", "synchronous_standby_names",
	"ssl", "ssl_ca_file", "ssl_cert_file", "ssl_key_file", "ssl_crl_file", "ssl_crl_dir",
	"ssl_passphrase_command", "ssl_passphrase_command_supports_reload",
}

// atStart are the "postmaster" parameters of PostgreSQL 15
// (postgres --describe-config), and those 16 to 18 added.
var atStart = []string{
	"archive_mode", "autovacuum_freeze_max_age", "autovacuum_max_workers", "autovacuum_multixact_freeze_max_age",
	"bonjour", "bonjour_name", "cluster_name", "data_directory", "data_sync_retry", "dynamic_shared_memory_type",
	"event_source", "external_pid_file", "hba_file", "hot_standby", "huge_page_size", "huge_pages", "ident_file",
	"jit_provider", "listen_addresses", "logging_collector", "max_connections", "max_files_per_process",
	"max_locks_per_transaction", "max_logical_replication_workers", "max_pred_locks_per_transaction",
	"max_prepared_transactions", "max_replication_slots", "max_wal_senders", "max_worker_processes",
	"min_dynamic_shared_memory", "old_snapshot_threshold", "port", "recovery_target", "recovery_target_action",
	"recovery_target_inclusive", "recovery_target_lsn", "recovery_target_name", "recovery_target_time",
	"recovery_target_timeline", "recovery_target_xid", "shared_buffers", "shared_memory_type",
	"shared_preload_libraries", "superuser_reserved_connections", "track_activity_query_size",
	"track_commit_timestamp", "unix_socket_directories", "unix_socket_group", "unix_socket_permissions",
	"wal_buffers", "wal_decode_buffer_size", "wal_level", "wal_log_hints",
	// 16, 17, 18
	"reserved_connections", "commit_timestamp_buffers", "multixact_member_buffers", "multixact_offset_buffers",
	"notify_buffers", "serializable_buffers", "subtransaction_buffers", "transaction_buffers",
	"max_notify_queue_pages", "io_method", "io_max_concurrency", "autovacuum_worker_slots",
}

// live are PostgreSQL 15's parameters that a running server takes (its
// sighup, superuser and user parameters: postgres --describe-config),
// sorted.
var live = []string{
	"DateStyle", "IntervalStyle", "TimeZone", "archive_cleanup_command", "archive_command",
	"archive_library", "archive_timeout", "array_nulls", "authentication_timeout", "autovacuum",
	"autovacuum_analyze_scale_factor", "autovacuum_analyze_threshold", "autovacuum_naptime", "autovacuum_vacuum_cost_delay", "autovacuum_vacuum_cost_limit",
	"autovacuum_vacuum_insert_scale_factor", "autovacuum_vacuum_insert_threshold", "autovacuum_vacuum_scale_factor", "autovacuum_vacuum_threshold", "autovacuum_work_mem",
	"backend_flush_after", "backslash_quote", "bgwriter_delay", "bgwriter_flush_after", "bgwriter_lru_maxpages",
	"bgwriter_lru_multiplier", "bytea_output", "check_function_bodies", "checkpoint_completion_target", "checkpoint_flush_after",
	"checkpoint_timeout", "checkpoint_warning", "client_connection_check_interval", "client_encoding", "client_min_messages",
	"commit_delay", "commit_siblings", "compute_query_id", "constraint_exclusion", "cpu_index_tuple_cost",
	"cpu_operator_cost", "cpu_tuple_cost", "cursor_tuple_fraction", "db_user_namespace", "deadlock_timeout",
	"debug_pretty_print", "debug_print_parse", "debug_print_plan", "debug_print_rewritten", "default_statistics_target",
	"default_table_access_method", "default_tablespace", "default_text_search_config", "default_toast_compression", "default_transaction_deferrable",
	"default_transaction_isolation", "default_transaction_read_only", "dynamic_library_path", "effective_cache_size", "effective_io_concurrency",
	"enable_async_append", "enable_bitmapscan", "enable_gathermerge", "enable_hashagg", "enable_hashjoin",
	"enable_incremental_sort", "enable_indexonlyscan", "enable_indexscan", "enable_material", "enable_memoize",
	"enable_mergejoin", "enable_nestloop", "enable_parallel_append", "enable_parallel_hash", "enable_partition_pruning",
	"enable_partitionwise_aggregate", "enable_partitionwise_join", "enable_seqscan", "enable_sort", "enable_tidscan",
	"escape_string_warning", "exit_on_error", "extension_destdir", "extra_float_digits", "from_collapse_limit",
	"fsync", "full_page_writes", "geqo", "geqo_effort", "geqo_generations",
	"geqo_pool_size", "geqo_seed", "geqo_selection_bias", "geqo_threshold", "gin_fuzzy_search_limit",
	"gin_pending_list_limit", "hash_mem_multiplier", "hot_standby_feedback", "idle_in_transaction_session_timeout", "idle_session_timeout",
	"jit", "jit_above_cost", "jit_inline_above_cost", "jit_optimize_above_cost", "join_collapse_limit",
	"krb_caseins_users", "krb_server_keyfile", "lc_messages", "lc_monetary", "lc_numeric",
	"lc_time", "lo_compat_privileges", "local_preload_libraries", "lock_timeout", "log_autovacuum_min_duration",
	"log_checkpoints", "log_connections", "log_destination", "log_directory", "log_disconnections",
	"log_duration", "log_error_verbosity", "log_executor_stats", "log_file_mode", "log_filename",
	"log_hostname", "log_line_prefix", "log_lock_waits", "log_min_duration_sample", "log_min_duration_statement",
	"log_min_error_statement", "log_min_messages", "log_parameter_max_length", "log_parameter_max_length_on_error", "log_parser_stats",
	"log_planner_stats", "log_recovery_conflict_waits", "log_replication_commands", "log_rotation_age", "log_rotation_size",
	"log_startup_progress_interval", "log_statement", "log_statement_sample_rate", "log_statement_stats", "log_temp_files",
	"log_timezone", "log_transaction_sample_rate", "log_truncate_on_rotation", "logical_decoding_work_mem", "maintenance_io_concurrency",
	"maintenance_work_mem", "max_parallel_maintenance_workers", "max_parallel_workers", "max_parallel_workers_per_gather", "max_pred_locks_per_page",
	"max_pred_locks_per_relation", "max_slot_wal_keep_size", "max_stack_depth", "max_standby_archive_delay", "max_standby_streaming_delay",
	"max_sync_workers_per_subscription", "max_wal_size", "min_parallel_index_scan_size", "min_parallel_table_scan_size", "min_wal_size",
	"parallel_leader_participation", "parallel_setup_cost", "parallel_tuple_cost", "password_encryption", "plan_cache_mode",
	"primary_conninfo", "primary_slot_name", "promote_trigger_file", "quote_all_identifiers", "random_page_cost",
	"recovery_end_command", "recovery_init_sync_method", "recovery_min_apply_delay", "recovery_prefetch", "recursive_worktable_factor",
	"restart_after_crash", "restore_command", "row_security", "search_path", "seq_page_cost",
	"session_preload_libraries", "session_replication_role", "ssl", "ssl_ca_file", "ssl_cert_file",
	"ssl_ciphers", "ssl_crl_dir", "ssl_crl_file", "ssl_dh_params_file", "ssl_ecdh_curve",
	"ssl_key_file", "ssl_max_protocol_version", "ssl_min_protocol_version", "ssl_passphrase_command", "ssl_passphrase_command_supports_reload",
	"ssl_prefer_server_ciphers", "standard_conforming_strings", "statement_timeout", "stats_fetch_consistency", "synchronize_seqscans",
	"synchronous_commit", "synchronous_standby_names", "syslog_facility", "syslog_ident", "syslog_sequence_numbers",
	"syslog_split_messages", "tcp_keepalives_count", "tcp_keepalives_idle", "tcp_keepalives_interval", "tcp_user_timeout",
	"temp_buffers", "temp_file_limit", "temp_tablespaces", "timezone_abbreviations", "track_activities",
	"track_counts", "track_functions", "track_io_timing", "track_wal_io_timing", "transform_null_equals",
	"update_process_title", "vacuum_cost_delay", "vacuum_cost_limit", "vacuum_cost_page_dirty", "vacuum_cost_page_hit",
	"vacuum_cost_page_miss", "vacuum_defer_cleanup_age", "vacuum_failsafe_age", "vacuum_freeze_min_age", "vacuum_freeze_table_age",
	"vacuum_multixact_failsafe_age", "vacuum_multixact_freeze_min_age", "vacuum_multixact_freeze_table_age", "wal_compression", "wal_init_zero",
	"wal_keep_size", "wal_receiver_create_temp_slot", "wal_receiver_status_interval", "wal_receiver_timeout", "wal_recycle",
	"wal_retrieve_retry_interval", "wal_sender_timeout", "wal_skip_threshold", "wal_sync_method", "wal_writer_delay",
	"wal_writer_flush_after", "work_mem", "xmlbinary", "xmloption",
}
