-- pool_members.tier is the member's order (config.proto Member.order, the
-- CLI's --order, R-ORDER-1): the column and its check take that name.
ALTER TABLE pool_members RENAME COLUMN tier TO "order";
ALTER TABLE pool_members RENAME CONSTRAINT pool_members_tier_positive TO pool_members_order_positive;
