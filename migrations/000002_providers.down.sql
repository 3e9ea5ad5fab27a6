DROP TABLE IF EXISTS member_prices;
DROP TABLE IF EXISTS record_prices;
DROP TABLE IF EXISTS pool_members;
DROP FUNCTION IF EXISTS pool_members_guard();
DROP TABLE IF EXISTS record_shares;
DROP TABLE IF EXISTS record_models;
DROP TABLE IF EXISTS provider_records;
DROP FUNCTION IF EXISTS provider_records_pool_guard();
