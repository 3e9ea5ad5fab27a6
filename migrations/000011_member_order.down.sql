ALTER TABLE pool_members RENAME CONSTRAINT pool_members_order_positive TO pool_members_tier_positive;
ALTER TABLE pool_members RENAME COLUMN "order" TO tier;
