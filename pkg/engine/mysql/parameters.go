package mysql

import (
	"slices"
	"strings"

	"github.com/dbcontroller/database-controller/pkg/engine"
)

// parameters are spec.parameters on MySQL and MariaDB: at start as
// --name=value after the controller's own arguments (the entrypoint puts
// the server before arguments that begin with "-"), live through SET
// PERSIST (package mysqlsql). MariaDB has no SET PERSIST: a value set
// live would be lost at the next start, so a MariaDB server reads them
// all at start.
var parameters = engine.Parameters{
	Args: func(name, value string) []string {
		return []string{"--" + name + "=" + value}
	},
	Given:    given,
	AtStart:  AtStart,
	Owned:    owned,
	Name:     engine.LowerCaseName,
	NameRule: engine.LowerCaseNameRule,
}

// given reads the --name=value arguments of a server's arguments that
// spec.parameters set: their names have no '-' (the schema refuses it),
// the controller's own (--defaults-extra-file) have.
func given(args []string) map[string]string {
	var out map[string]string
	for _, arg := range args {
		name, value, ok := strings.Cut(strings.TrimPrefix(arg, "--"), "=")
		if !ok || !strings.HasPrefix(arg, "--") || strings.Contains(name, "-") || slices.Contains(owned, name) {
			continue
		}
		if out == nil {
			out = map[string]string{}
		}
		out[name] = value
	}
	return out
}

// AtStart reports whether MySQL reads name only at start, as far as the
// controller knows before a server says: MySQL 9.7's read-only global
// variables. A server's own answer (package mysqlsql's Check) decides once
// it runs: a MariaDB server reads them all at start.
func AtStart(name string) bool {
	_, found := slices.BinarySearch(atStart, name)
	return found
}

// owned are the parameters the controller sets, or that the pods,
// replication, fencing, the clone and seed, backups or TLS depend on,
// MySQL's and MariaDB's names:
//   - where the server listens and keeps its files, and logging to the
//     pod's log;
//   - what the init script writes (server ids, GTIDs, binary and relay
//     logs, durability at each commit, replica timeouts);
//   - read_only and super_read_only (the fence and the replica's role),
//     semi-synchronous replication (spec.replication.synchronous), and
//     what starts replication or loads plugins;
//   - secure_file_priv (the fence's marker file is written through it);
//   - TLS, which the controller will set up.
var owned = []string{
	"port", "bind_address", "socket", "datadir", "basedir", "tmpdir", "pid_file", "plugin_dir", "user",
	"skip_networking", "mysqlx", "mysqlx_port", "mysqlx_socket", "admin_address", "admin_port",
	"log_error", "init_file", "secure_file_priv", "persisted_globals_load",
	"server_id", "report_host", "report_port", "gtid_mode", "enforce_gtid_consistency", "gtid_strict_mode", "gtid_domain_id",
	"log_bin", "log_bin_basename", "log_bin_index", "log_replica_updates", "log_slave_updates", "binlog_format",
	"sync_binlog", "innodb_flush_log_at_trx_commit",
	"relay_log", "relay_log_basename", "relay_log_index", "relay_log_recovery", "replica_net_timeout", "slave_net_timeout",
	"skip_replica_start", "skip_slave_start", "read_only", "super_read_only",
	"rpl_semi_sync_source_enabled", "rpl_semi_sync_source_wait_for_replica_count", "rpl_semi_sync_source_timeout",
	"rpl_semi_sync_replica_enabled", "rpl_semi_sync_master_enabled", "rpl_semi_sync_master_timeout",
	"rpl_semi_sync_master_wait_point", "rpl_semi_sync_slave_enabled",
	"plugin_load", "plugin_load_add", "clone_valid_donor_list",
	"require_secure_transport", "ssl_ca", "ssl_capath", "ssl_cert", "ssl_key", "ssl_crl", "ssl_crlpath",
}

// atStart are MySQL 9.7's read-only global variables (SET GLOBAL name =
// @@GLOBAL.name refused with error 1238), sorted.
var atStart = []string{
	"admin_address", "admin_port", "auto_generate_certs", "back_log", "basedir", "bind_address",
	"binlog_gtid_simple_recovery", "binlog_rotate_encryption_master_key_at_startup", "binlog_row_event_max_size",
	"build_id", "caching_sha2_password_auto_generate_rsa_keys", "caching_sha2_password_private_key_path",
	"caching_sha2_password_public_key_path", "character_set_system", "character_sets_dir", "container_aware", "core_file",
	"create_admin_listener_thread", "datadir", "disabled_storage_engines", "disconnect_on_expired_password",
	"ft_max_word_len", "ft_min_word_len", "ft_query_expansion_limit", "ft_stopword_file", "gtid_executed", "gtid_owned",
	"have_compress", "have_dynamic_loading", "have_geometry", "have_profiling", "have_query_cache", "have_rtree_keys",
	"have_statement_timeout", "have_symlink", "hostname", "init_file", "innodb_adaptive_hash_index_parts",
	"innodb_api_disable_rowlock", "innodb_api_enable_binlog", "innodb_api_enable_mdl", "innodb_autoinc_lock_mode",
	"innodb_buffer_pool_chunk_size", "innodb_buffer_pool_instances", "innodb_buffer_pool_load_at_startup",
	"innodb_data_file_path", "innodb_data_home_dir", "innodb_dedicated_server", "innodb_directories",
	"innodb_doublewrite_batch_size", "innodb_doublewrite_dir", "innodb_doublewrite_files", "innodb_doublewrite_pages",
	"innodb_flush_method", "innodb_force_load_corrupted", "innodb_force_recovery", "innodb_ft_cache_size",
	"innodb_ft_max_token_size", "innodb_ft_min_token_size", "innodb_ft_sort_pll_degree", "innodb_ft_total_cache_size",
	"innodb_log_group_home_dir", "innodb_native_foreign_keys", "innodb_numa_interleave", "innodb_open_files",
	"innodb_page_cleaners", "innodb_page_size", "innodb_purge_threads", "innodb_read_io_threads", "innodb_read_only",
	"innodb_rollback_on_timeout", "innodb_sort_buffer_size", "innodb_sync_array_size", "innodb_temp_data_file_path",
	"innodb_temp_tablespaces_dir", "innodb_undo_directory", "innodb_use_native_aio", "innodb_validate_tablespace_paths",
	"innodb_version", "innodb_write_io_threads", "large_files_support", "large_page_size", "large_pages",
	"lc_messages_dir", "license", "locked_in_memory", "log_bin", "log_bin_basename", "log_bin_index", "log_error",
	"log_replica_updates", "log_slave_updates", "lower_case_file_system", "lower_case_table_names", "max_digest_length",
	"myisam_mmap_size", "myisam_recover_options", "ngram_token_size", "open_files_limit", "performance_schema",
	"performance_schema_accounts_size", "performance_schema_digests_size", "performance_schema_error_size",
	"performance_schema_events_stages_history_long_size", "performance_schema_events_stages_history_size",
	"performance_schema_events_statements_history_long_size", "performance_schema_events_statements_history_size",
	"performance_schema_events_transactions_history_long_size", "performance_schema_events_transactions_history_size",
	"performance_schema_events_waits_history_long_size", "performance_schema_events_waits_history_size",
	"performance_schema_hosts_size", "performance_schema_max_cond_classes", "performance_schema_max_cond_instances",
	"performance_schema_max_digest_length", "performance_schema_max_file_classes", "performance_schema_max_file_handles",
	"performance_schema_max_file_instances", "performance_schema_max_index_stat", "performance_schema_max_logger_classes",
	"performance_schema_max_memory_classes", "performance_schema_max_metadata_locks",
	"performance_schema_max_meter_classes", "performance_schema_max_metric_classes",
	"performance_schema_max_mutex_classes", "performance_schema_max_mutex_instances",
	"performance_schema_max_prepared_statements_instances", "performance_schema_max_program_instances",
	"performance_schema_max_rwlock_classes", "performance_schema_max_rwlock_instances",
	"performance_schema_max_socket_classes", "performance_schema_max_socket_instances",
	"performance_schema_max_sql_text_length", "performance_schema_max_stage_classes",
	"performance_schema_max_statement_classes", "performance_schema_max_statement_stack",
	"performance_schema_max_table_handles", "performance_schema_max_table_instances",
	"performance_schema_max_table_lock_stat", "performance_schema_max_thread_classes",
	"performance_schema_max_thread_instances", "performance_schema_session_connect_attrs_size",
	"performance_schema_setup_actors_size", "performance_schema_setup_objects_size", "performance_schema_users_size",
	"persist_only_admin_x509_subject", "persist_sensitive_variables_in_plaintext", "persisted_globals_load", "pid_file",
	"plugin_dir", "port", "protocol_version", "relay_log", "relay_log_basename", "relay_log_index", "relay_log_recovery",
	"relay_log_space_limit", "replica_load_tmpdir", "replica_skip_errors", "report_host", "report_password",
	"report_port", "report_user", "secure_file_priv", "server_memory", "server_uuid",
	"sha256_password_auto_generate_rsa_keys", "sha256_password_private_key_path", "sha256_password_public_key_path",
	"skip_external_locking", "skip_name_resolve", "skip_networking", "skip_replica_start", "skip_show_database",
	"skip_slave_start", "slave_load_tmpdir", "slave_skip_errors", "socket", "ssl_fips_mode", "system_time_zone",
	"table_open_cache_instances", "thread_handling", "thread_stack", "tls_certificates_enforced_validation", "tmpdir",
	"version", "version_comment", "version_compile_machine", "version_compile_os", "version_compile_zlib",
	"version_with_update",
}
